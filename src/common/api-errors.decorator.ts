import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorCode, ERROR_STATUS } from './errors';

/** Documents the contract's error responses of a route, all with the one Error schema. */
export function ApiErrors(...codes: ErrorCode[]): MethodDecorator & ClassDecorator {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  return applyDecorators(
    ...[...byStatus].map(([status, sameStatus]) =>
      ApiResponse({ status, description: sameStatus.join(' or '), schema: { $ref: '#/components/schemas/Error' } }),
    ),
  );
}

/** What every authenticated /api/v1 route can answer besides its own errors. */
export const CUSTOMER_API_ERRORS: ErrorCode[] = ['INVALID_API_KEY', 'REVOKED_API_KEY', 'RATE_LIMITED', 'INTERNAL_ERROR', 'SERVICE_UNAVAILABLE'];
