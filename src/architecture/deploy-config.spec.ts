import { load } from 'js-yaml';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BlockList } from 'node:net';

/**
 * The shipped proxy (deploy/nginx.conf) and compose file: /metrics reaches the app only from internal
 * networks, and Prometheus scrapes the replicas directly. No nginx binary on the build machine, so
 * the config is read here and nginx's location choice (exact, then regexes in order, then the longest
 * prefix) is applied to it.
 */
const root = join(__dirname, '../..');
const nginx = readFileSync(join(root, 'deploy/nginx.conf'), 'utf8').replace(/#.*$/gm, '');

interface Location {
  modifier: string;
  pattern: string;
  body: string;
}

function locations(): Location[] {
  const found: Location[] = [];
  const header = /location\s+(=|~\*|~|\^~)?\s*(\S+)\s*\{/g;
  for (let match = header.exec(nginx); match; match = header.exec(nginx)) {
    let depth = 1;
    let end = header.lastIndex;
    for (; depth > 0; end++) depth += nginx[end] === '{' ? 1 : nginx[end] === '}' ? -1 : 0;
    found.push({ modifier: match[1] ?? '', pattern: match[2], body: nginx.slice(header.lastIndex, end - 1) });
  }
  return found;
}

function locationFor(path: string): Location | undefined {
  const all = locations();
  const exact = all.find((l) => l.modifier === '=' && l.pattern === path);
  if (exact) return exact;
  const regex = all.find((l) => l.modifier.startsWith('~') && new RegExp(l.pattern, l.modifier === '~*' ? 'i' : '').test(path));
  if (regex) return regex;
  return all.filter((l) => l.modifier === '' && path.startsWith(l.pattern)).sort((a, b) => b.pattern.length - a.pattern.length)[0];
}

function geo(name: string): { defaultValue: string; networks: BlockList; entries: string[] } {
  const block = new RegExp(`geo\\s+\\$${name}\\s*\\{([^}]*)\\}`).exec(nginx)?.[1] ?? '';
  const networks = new BlockList();
  const entries: string[] = [];
  let defaultValue = '';
  for (const [, key, value] of block.matchAll(/(\S+)\s+(\S+);/g)) {
    if (key === 'default') defaultValue = value;
    else if (value === '1') {
      const [address, prefix] = key.split('/');
      networks.addSubnet(address, Number(prefix), address.includes(':') ? 'ipv6' : 'ipv4');
      entries.push(key);
    }
  }
  return { defaultValue, networks, entries };
}

describe('deploy/nginx.conf', () => {
  it.each(['/metrics', '/metrics/', '/METRICS', '/Metrics/'])('serves %s only to internal clients (a 404 in the contract shape otherwise)', (path) => {
    const location = locationFor(path);
    expect(location?.body).toMatch(/if \(\$internal_client = 0\) \{\s*return 404 '\{"error":\{"code":"NOT_FOUND"/);
    expect(location?.body).toMatch(/proxy_pass http:\/\/phone_filter;/);
  });

  it("answers its own 404s in the contract's content type", () => {
    expect(nginx).toMatch(/default_type application\/json;\s+charset utf-8;\s+charset_types application\/json;/);
  });

  it('counts loopback, RFC 1918 and IPv6 unique-local as internal, and nothing else', () => {
    const internal = geo('internal_client');
    expect(internal.defaultValue).toBe('0');
    for (const [address, family] of [['127.0.0.1', 'ipv4'], ['10.1.2.3', 'ipv4'], ['172.18.0.5', 'ipv4'], ['192.168.1.1', 'ipv4'], ['::1', 'ipv6'], ['fd00::5', 'ipv6']] as const) {
      expect({ address, internal: internal.networks.check(address, family) }).toEqual({ address, internal: true });
    }
    for (const [address, family] of [['8.8.8.8', 'ipv4'], ['172.32.0.1', 'ipv4'], ['100.64.0.1', 'ipv4'], ['2001:4860::1', 'ipv6']] as const) {
      expect({ address, internal: internal.networks.check(address, family) }).toEqual({ address, internal: false });
    }
  });

  it('still proxies the API, and documents how to keep /admin/v1 to the admin network', () => {
    expect(locationFor('/api/v1/filter')?.body).toMatch(/proxy_pass http:\/\/phone_filter;/);
    expect(locationFor('/admin/v1/accounts')?.body).toMatch(/proxy_pass http:\/\/phone_filter;/);
    const raw = readFileSync(join(root, 'deploy/nginx.conf'), 'utf8');
    expect(raw).toMatch(/#\s*if \(\$admin_client = 0\)/);
    expect(geo('admin_client').defaultValue).toBe('0');
  });
});

describe('docker-compose.yml', () => {
  it('lets Prometheus scrape every app replica directly, not through nginx', () => {
    const compose = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
    expect(compose).toMatch(/prometheus:\n\s+image: prom\/prometheus:/);
    expect(compose).toMatch(/\.\/deploy\/prometheus\.yml:\/etc\/prometheus\/prometheus\.yml:ro/);
    const prometheus = readFileSync(join(root, 'deploy/prometheus.yml'), 'utf8');
    expect(prometheus).toMatch(/metrics_path: \/metrics/);
    expect(prometheus).toMatch(/names: \[app\]\s+type: A\s+port: 3000/);
  });
});

describe('deploy/alerts.yml and the Grafana dashboard, against the docs and the provider metrics', () => {
  const alerts = (load(readFileSync(join(root, 'deploy/alerts.yml'), 'utf8')) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> }).groups.flatMap(
    (group) => group.rules,
  );
  const dashboard = JSON.parse(readFileSync(join(root, 'deploy/grafana/dashboards/phone-filter.json'), 'utf8')) as {
    panels: Array<{ id: number; title: string; targets: Array<{ expr: string }> }>;
  };
  const operations = readFileSync(join(root, 'docs/operations.md'), 'utf8');

  it('every alert is explained in the alert table of docs/operations.md, and the table names no other', () => {
    const documented = [...operations.matchAll(/^\| `(PhoneFilter\w+)` \|/gm)].map((match) => match[1]);
    expect(documented.sort()).toEqual(alerts.map((rule) => rule.alert).sort());
  });

  it('alerts on failover above a threshold and on a provider demoted for long', () => {
    expect(alerts.find((rule) => rule.alert === 'PhoneFilterFailoverHigh')?.expr).toMatch(/phone_filter_upstream_failovers_total/);
    expect(alerts.find((rule) => rule.alert === 'PhoneFilterProviderDemoted')?.expr).toMatch(/phone_filter_provider_demoted/);
  });

  it.each([
    ['answers', 'phone_filter_provider_answers_total'],
    ['failures', 'phone_filter_provider_failures_total'],
    ['latency', 'phone_filter_provider_attempt_duration_seconds_bucket'],
  ])('has a panel of %s per provider (grouped by provider)', (_, metric) => {
    const panel = dashboard.panels.find((candidate) => candidate.targets.some((target) => target.expr.includes(metric)));
    expect(panel?.targets.every((target) => /by \([^)]*\bprovider\b/.test(target.expr))).toBe(true);
  });

  it('panel ids are unique', () => {
    const ids = dashboard.panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
