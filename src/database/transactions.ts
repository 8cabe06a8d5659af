import { ClsPluginTransactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import type { DynamicModule, Provider } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsModule } from 'nestjs-cls';
import type { EntityManager } from 'typeorm';

/**
 * The transaction context (nestjs-cls + @nestjs-cls/transactional). A service that writes to several
 * modules opens the transaction (`txHost.withTransaction(...)`); the repositories it calls join it
 * through `txHost.tx` (the transaction's EntityManager, or the plain one outside a
 * transaction), so no repository receives another module's closure or an EntityManager.
 *
 * No middleware is mounted: AsyncLocalStorage is entered only by `withTransaction`, never on the
 * request path of /filter (whose charge statement does not use the context at all).
 */
export { TransactionHost };
/** What a constructor names to join or open a transaction: `private readonly tx: TransactionHost<TypeOrmTx>`. */
export type TypeOrmTx = TransactionalAdapterTypeOrm;

export const TransactionsModule = withoutRequestEnhancers(
  ClsModule.forRoot({
    global: true,
    plugins: [
      new ClsPluginTransactional({
        imports: [TypeOrmModule],
        adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
      }),
    ],
  }),
);

/**
 * ClsModule.forRoot registers a global guard and a global interceptor whatever its options; unmounted
 * (our case: no `guard`/`interceptor` option) both do nothing, but a global interceptor alone puts every
 * request through Nest's interceptor chain: RxJS observables and two `AsyncResource.bind` per request,
 * each of which defines an `asyncResource` accessor with getter and setter closures of its own. V8
 * allocates an accessor's pair in the old generation, so those closures, and all they capture (the
 * interceptor chain, the execution context: req, res and their headers), survive every scavenge until
 * a major GC: ~8 KB promoted per call, every call, and a third of a bare route's CPU (docs/architecture.md, "What a call may leave behind"). The two no-ops are dropped here: do not give ClsModule a
 * `guard` or `interceptor` to mount while this wraps it (they would be dropped with them).
 */
export function withoutRequestEnhancers(module: DynamicModule): DynamicModule {
  let dropped = 0;
  const isEnhancer = (provider: Provider) => typeof provider === 'object' && 'provide' in provider && (provider.provide === APP_GUARD || provider.provide === APP_INTERCEPTOR);
  const imports = module.imports?.map((imported) => {
    if (!imported || !('module' in imported) || !imported.providers?.some(isEnhancer)) return imported;
    dropped += imported.providers.filter(isEnhancer).length;
    return { ...imported, providers: imported.providers.filter((provider) => !isEnhancer(provider)) };
  });
  // nestjs-cls changed how it registers them: fail at start-up, not with a slower request path.
  if (dropped !== 2) throw new Error(`nestjs-cls: expected its global guard and interceptor, found ${dropped}`);
  return { ...module, imports };
}

/**
 * The transaction a service opened, for a repository method whose statements only make sense
 * together with the caller's (a lease held FOR SHARE, rows locked for the charge that follows).
 * Throws when called outside one: a programming error, never a request's.
 */
export function joinedTransaction(txHost: TransactionHost<TypeOrmTx>): EntityManager {
  if (!txHost.isTransactionActive()) throw new Error('this statement must run inside a transaction its service opened (txHost.withTransaction)');
  return txHost.tx;
}
