import { Body, Controller, Get, HttpCode, HttpStatus, Param, Patch, Post, Put, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/api-errors.decorator';
import { ErrorCode } from '../common/errors';
import { AdminTokenGuard, HttpAdminActor } from './admin-token.guard';
import { AdminService } from './admin.service';
import type { AdminActor } from './admin.service';
import { UsagePageDto, UsageQueryDto } from '../credits/dto/usage.dto';
import { AccountControlsPatchDto } from '../settings/dto/settings.dto';
import { AccountsQueryDto, AuditQueryDto, ChangeCreditsDto, CreateAccountDto, ErasureRequestDto, UpdateAccountDto, UpdatePlanDto } from './dto/admin-requests.dto';
import {
  AccountDto,
  AccountPageDto,
  AdminBalanceDto,
  AuditPageDto,
  CreatedAccountDto,
  ErasureDto,
  IssuedKeyDto,
  PlanDto,
  PlansDto,
  RevokedKeyDto,
} from './dto/admin-responses.dto';

/** What every admin route can answer: NOT_FOUND also when ADMIN_TOKEN is unset (the admin API is off). */
const ADMIN_ERRORS: ErrorCode[] = ['INVALID_API_KEY', 'NOT_FOUND', 'INTERNAL_ERROR', 'SERVICE_UNAVAILABLE'];

/** /admin/v1: deliberately not @CustomerApi(), so neither API keys nor plan rate limits apply. */
@ApiTags('admin')
@ApiBearerAuth('admin-token')
@ApiErrors(...ADMIN_ERRORS)
@UseGuards(AdminTokenGuard)
@Controller('admin/v1')
export class AdminController {
  constructor(private readonly admin: AdminService) {}

  @Post('accounts')
  @ApiOperation({ summary: 'Create an account', description: 'Creates an account (with default settings) and its first API key, shown once.' })
  @ApiCreatedResponse({ type: CreatedAccountDto })
  @ApiErrors('INVALID_REQUEST')
  createAccount(@Body() body: CreateAccountDto, @HttpAdminActor() actor: AdminActor): Promise<CreatedAccountDto> {
    return this.admin.createAccount(body, actor);
  }

  @Get('accounts')
  @ApiOperation({
    summary: 'List accounts', description: 'The accounts, newest first, a page at a time; filter by name (substring, any case), plan, disabled and balance_below.',
  })
  @ApiOkResponse({
    type: AccountPageDto,
    example: {
      accounts: [{ id: '5b0c6f1e-8a8c-4f6e-9a52-0d4c1d8b2f10', name: 'Acme Ltd', plan: 'standard', balance: 420, disabled: false, created_at: '2026-11-22T10:00:00.000Z' }],
      next_cursor: null,
    },
  })
  @ApiErrors('INVALID_REQUEST')
  listAccounts(@Query() query: AccountsQueryDto): Promise<AccountPageDto> {
    return this.admin.listAccounts(query);
  }

  @Get('accounts/:id/usage')
  @ApiOperation({ summary: "An account's credits ledger", description: "The account's credits ledger, newest first, exactly as the customer sees it at GET /api/v1/usage." })
  @ApiOkResponse({ type: UsagePageDto })
  @ApiErrors('INVALID_REQUEST')
  accountUsage(@Param('id') id: string, @Query() query: UsageQueryDto): Promise<UsagePageDto> {
    return this.admin.accountUsage(id, query);
  }

  @Patch('accounts/:id/settings')
  @ApiOperation({
    summary: "Sets an account's daily spending cap, low-balance threshold and webhook URL (null clears one); in the audit trail.",
    description: 'The same rules as the customer\'s PATCH /api/v1/settings (webhook_url: http(s) at a public address).',
  })
  @ApiOkResponse({ type: AccountDto })
  @ApiErrors('INVALID_REQUEST')
  updateAccountSettings(@Param('id') id: string, @Body() body: AccountControlsPatchDto, @HttpAdminActor() actor: AdminActor): Promise<AccountDto> {
    return this.admin.updateAccountControls(id, body, actor);
  }

  @Get('accounts/:id')
  @ApiOperation({ summary: 'Get an account', description: 'An account: balance, plan, disabled, settings and keys (never the key material).' })
  @ApiOkResponse({ type: AccountDto })
  getAccount(@Param('id') id: string): Promise<AccountDto> {
    return this.admin.getAccount(id);
  }

  @Patch('accounts/:id')
  @ApiOperation({ summary: "Change an account's plan or state", description: "Changes an account's plan or disables / enables it (its keys then get 401 REVOKED_API_KEY)." })
  @ApiOkResponse({ type: AccountDto })
  @ApiErrors('INVALID_REQUEST')
  updateAccount(@Param('id') id: string, @Body() body: UpdateAccountDto, @HttpAdminActor() actor: AdminActor): Promise<AccountDto> {
    return this.admin.updateAccount(id, body, actor);
  }

  @Post('accounts/:id/credits')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: 'Add or remove credits', description: 'Tops up (amount > 0) or adjusts (amount < 0, never below zero) the balance; one ledger row.' })
  @ApiOkResponse({ type: AdminBalanceDto })
  @ApiErrors('INVALID_REQUEST')
  changeCredits(@Param('id') id: string, @Body() body: ChangeCreditsDto, @HttpAdminActor() actor: AdminActor): Promise<AdminBalanceDto> {
    return this.admin.changeCredits(id, body.amount, body.reason, actor);
  }

  @Post('accounts/:id/keys')
  @ApiOperation({ summary: 'Issue an API key', description: 'Issues another API key for the account, shown once.' })
  @ApiCreatedResponse({ type: IssuedKeyDto })
  async issueKey(@Param('id') id: string, @HttpAdminActor() actor: AdminActor): Promise<IssuedKeyDto> {
    const key = await this.admin.issueKey(id, actor);
    return { id: key.id, prefix: key.prefix, api_key: key.apiKey };
  }

  @Post('keys/:id/revoke')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: 'Revoke a key', description: 'Revokes a key: refused from the next request on (other instances within a second).' })
  @ApiOkResponse({ type: RevokedKeyDto })
  revokeKey(@Param('id') id: string, @HttpAdminActor() actor: AdminActor): Promise<RevokedKeyDto> {
    return this.admin.revokeKey(id, actor);
  }

  @Get('plans')
  @ApiOperation({ summary: 'List plans', description: 'The plans and their rate limits.' })
  @ApiOkResponse({ type: PlansDto })
  async listPlans(): Promise<PlansDto> {
    return { plans: await this.admin.listPlans() };
  }

  @Put('plans/:name')
  @ApiOperation({ summary: "Change a plan's rate limit", description: "Changes a plan's limit and window; effective within a second on every instance." })
  @ApiOkResponse({ type: PlanDto })
  @ApiErrors('INVALID_REQUEST')
  updatePlan(@Param('name') name: string, @Body() body: UpdatePlanDto, @HttpAdminActor() actor: AdminActor): Promise<PlanDto> {
    return this.admin.updatePlan(name, body, actor);
  }

  @Post('erasures')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    summary: 'Erases a phone number from every store (docs/privacy.md): every account, the ledger (masked form kept), caches on every instance.',
    description:
      'Idempotent: running it again finds nothing more to change. The audit trail records the erasure, its actor and the keyed hash of the number, never the number.',
  })
  @ApiOkResponse({ type: ErasureDto })
  @ApiErrors('INVALID_REQUEST')
  erase(@Body() body: ErasureRequestDto, @HttpAdminActor() actor: AdminActor): Promise<ErasureDto> {
    return this.admin.erase(body.phone, actor);
  }

  @Get('audit')
  @ApiOperation({ summary: 'The audit trail', description: 'The audit trail of admin actions (HTTP and CLI), newest first.' })
  @ApiOkResponse({ type: AuditPageDto })
  @ApiErrors('INVALID_REQUEST')
  listAudit(@Query() query: AuditQueryDto): Promise<AuditPageDto> {
    return this.admin.listAudit(query);
  }
}
