import { load } from 'js-yaml';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { startTestApp, TestApp } from './helpers/test-app';
import { hlrLookupsEnv } from './provider-helpers';

/**
 * deploy/'s alert rules and Grafana dashboard against what /metrics really exports: a renamed metric
 * must not leave an alert that can never fire or a panel that stays empty.
 */
const DEPLOY = join(__dirname, '..', 'deploy');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const PROMQL_WORDS = new Set([
  'sum', 'max', 'min', 'avg', 'count', 'rate', 'irate', 'increase', 'histogram_quantile', 'by', 'without',
  'and', 'or', 'unless', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'abs', 'clamp_min',
]);
// Series Prometheus makes itself for every scrape target.
const SYNTHETIC = new Set(['up']);

/** The metric names an expression reads (label matchers, grouping labels, durations and numbers removed). */
function metricsIn(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ');
  const names = bare.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? [];
  return [...new Set(names.filter((name) => !PROMQL_WORDS.has(name)))];
}

/** The family a series belongs to: histograms export <name>_bucket, _sum and _count. */
function family(name: string, exported: Set<string>): string {
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return exported.has(name) ? name : base;
}

describe('deploy/: Prometheus alert rules and the Grafana dashboard', () => {
  let sim: UpstreamSimulator;
  let t: TestApp;
  let exported: Set<string>;

  beforeAll(async () => {
    // hlr-lookups, so the circuit-breaker gauge exists too.
    sim = await startUpstreamSimulator();
    t = await startTestApp(hlrLookupsEnv(sim.url));
    const metrics = await request(t.http).get('/metrics').expect(200);
    exported = new Set([...metrics.text.matchAll(/^# TYPE (\S+) \S+$/gm)].map((match) => match[1]));
  });
  afterAll(async () => {
    await t?.close();
    await sim?.close();
  });

  it('the metric-name extraction reads names, not labels, functions or durations', () => {
    expect(metricsIn('histogram_quantile(0.99, sum by (le, check) (rate(x_bucket{route="/a", status=~"5.."}[5m]))) > 1 and up == 0')).toEqual([
      'x_bucket',
      'up',
    ]);
  });

  it('the alert rule file is valid: named, with an expression over exported metrics, a duration and a severity', () => {
    const file = load(readFileSync(join(DEPLOY, 'alerts.yml'), 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> };
    const rules = file.groups.flatMap((group) => group.rules);
    expect(rules.length).toBeGreaterThanOrEqual(7);
    const names = rules.map((rule) => rule.alert);
    expect(new Set(names).size).toBe(names.length);
    for (const rule of rules) {
      expect(rule).toMatchObject({ alert: expect.stringMatching(/^PhoneFilter[A-Z]\w+$/), expr: expect.any(String) });
      expect(rule.for).toMatch(/^\d+[smh]$/);
      expect(['critical', 'warning', 'info']).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary).toBeTruthy();
      // Balanced brackets: a cheap syntax check that catches a cut expression.
      for (const [open, close] of [['(', ')'], ['{', '}'], ['[', ']']]) {
        expect(rule.expr.split(open).length).toBe(rule.expr.split(close).length);
      }
      for (const metric of metricsIn(rule.expr)) {
        if (!SYNTHETIC.has(metric)) expect({ rule: rule.alert, metric, exported: exported.has(family(metric, exported)) }).toEqual({ rule: rule.alert, metric, exported: true });
      }
    }
  });

  it('every metric a dashboard panel queries is exported by /metrics, and the panels cover the service', () => {
    const dashboard = JSON.parse(readFileSync(join(DEPLOY, 'grafana', 'dashboards', 'phone-filter.json'), 'utf8')) as {
      uid: string;
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    };
    expect(dashboard.uid).toBe('phone-filter');
    const queried = new Set<string>();
    for (const panel of dashboard.panels) {
      expect(panel.targets.length).toBeGreaterThan(0);
      for (const target of panel.targets) for (const metric of metricsIn(target.expr)) queried.add(metric);
    }
    for (const metric of queried) {
      if (!SYNTHETIC.has(metric)) expect({ metric, exported: exported.has(family(metric, exported)) }).toEqual({ metric, exported: true });
    }
    // Traffic, latency, errors, credits, cache, breaker and bulk backlog each have a panel.
    expect([...queried].map((metric) => family(metric, exported)).sort()).toEqual(
      expect.arrayContaining([
        'http_requests_total',
        'http_request_duration_seconds',
        'phone_filter_credits_charged_total',
        'phone_filter_credits_refunded_total',
        'phone_filter_lookup_cache_hits_total',
        'phone_filter_lookup_cache_misses_total',
        'phone_filter_upstream_circuit_state',
        'phone_filter_upstream_failovers_total',
        'phone_filter_bulk_jobs',
        // Per provider (LOOKUP_PROVIDERS): answers, failures by reason, latency, configured cost, demotion.
        'phone_filter_provider_answers_total',
        'phone_filter_provider_failures_total',
        'phone_filter_provider_attempt_duration_seconds',
        'phone_filter_provider_cost_total',
        'phone_filter_provider_demoted',
      ]),
    );
  });

  it('docker-compose.yml runs Prometheus and Grafana with these files', () => {
    const compose = load(readFileSync(join(__dirname, '..', 'docker-compose.yml'), 'utf8')) as {
      services: Record<string, { volumes?: string[] }>;
    };
    expect(compose.services.prometheus.volumes).toEqual(
      expect.arrayContaining(['./deploy/prometheus.yml:/etc/prometheus/prometheus.yml:ro', './deploy/alerts.yml:/etc/prometheus/alerts.yml:ro']),
    );
    expect(compose.services.grafana.volumes).toEqual(
      expect.arrayContaining(['./deploy/grafana/provisioning:/etc/grafana/provisioning:ro', './deploy/grafana/dashboards:/var/lib/grafana/dashboards:ro']),
    );
    const prometheus = load(readFileSync(join(DEPLOY, 'prometheus.yml'), 'utf8')) as { rule_files: string[] };
    expect(prometheus.rule_files).toEqual(['/etc/prometheus/alerts.yml']);
  });
});
