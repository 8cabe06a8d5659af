import { AdminModule } from '../../src/admin/admin.module';
import { FilterModule } from '../../src/filter/filter.module';
import { proxiedDatabaseUrl, TcpProxy } from '../helpers/tcp-proxy';
import { Medium, startMedium } from './medium';

/** Services connected to `m`'s database through a TCP proxy of their own, which the test can break. */
export async function behindProxy(m: Medium): Promise<{ instance: Medium; proxy: TcpProxy }> {
  let proxy!: TcpProxy;
  const instance = await startMedium({
    imports: [AdminModule, FilterModule],
    joining: m,
    connectVia: async (databaseUrl) => {
      const proxied = await proxiedDatabaseUrl(databaseUrl);
      proxy = proxied.proxy;
      return proxied.url;
    },
  });
  return { instance, proxy };
}
