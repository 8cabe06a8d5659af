import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { ApiKeysService } from './api-keys.service';
import { CUSTOMER_API } from './customer-api.decorator';

/** Global guard: every route marked @CustomerApi() needs `Authorization: Bearer <API_KEY>`. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeysService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const isCustomerApi = this.reflector.getAllAndOverride<boolean>(CUSTOMER_API, [context.getHandler(), context.getClass()]);
    if (!isCustomerApi) return true;
    const request = context.switchToHttp().getRequest<Request>();
    request.account = await this.keys.authenticate(request.header('authorization'));
    return true;
  }
}
