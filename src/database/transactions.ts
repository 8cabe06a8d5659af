import { ClsPluginTransactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
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

export const TransactionsModule = ClsModule.forRoot({
  global: true,
  plugins: [
    new ClsPluginTransactional({
      imports: [TypeOrmModule],
      adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
    }),
  ],
});

/**
 * The transaction a service opened, for a repository method whose statements only make sense
 * together with the caller's (a lease held FOR SHARE, rows locked for the charge that follows).
 * Throws when called outside one: a programming error, never a request's.
 */
export function joinedTransaction(txHost: TransactionHost<TypeOrmTx>): EntityManager {
  if (!txHost.isTransactionActive()) throw new Error('this statement must run inside a transaction its service opened (txHost.withTransaction)');
  return txHost.tx;
}
