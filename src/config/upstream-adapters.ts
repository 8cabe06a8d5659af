/**
 * What the configuration knows of each adapter a provider id can run on (`<ID>_ADAPTER`, or PROVIDER):
 * its name, what it is, and the settings its protocol reads. Nothing else decides which `<ID>_*`
 * variables an adapter needs: start-up asks for exactly the ones listed here, the docs' adapters table
 * is generated from this list, and provider.module.ts has one factory per name (the compiler checks
 * that none is missing). The adapter's code is in src/provider/adapters/.
 *
 * It lives in config/ (not beside the adapter) because config/ validates the environment before
 * anything starts and provider/ already imports config/; a field the routing needs later (the checks
 * an adapter answers) goes here too, as one more entry of the descriptor.
 */
export interface UpstreamAdapter {
  /** The value of `<ID>_ADAPTER` and of PROVIDER. */
  readonly name: string;
  /** One line for the docs' adapters table. */
  readonly summary: string;
  /** Where its upstream is described, when it has a page (docs/). */
  readonly guide?: string;
  /**
   * The settings of a provider id on this adapter that its protocol reads, each with what it is at
   * the upstream: `url` with its default (the upstream's public API), `key` and `secret` (both
   * required when listed). A setting not listed is neither needed nor read (an in-process adapter
   * lists none; a bearer-token upstream lists `key` alone).
   */
  readonly settings: {
    readonly url?: { readonly default: string };
    readonly key?: string;
    readonly secret?: string;
  };
}

export const UPSTREAM_ADAPTERS = [
  {
    name: 'sandbox',
    summary: 'In-process, simulated answers (the test-number table of docs/api.md); numbering-plan facts from libphonenumber',
    settings: {},
  },
  {
    name: 'hlr-lookups',
    summary: 'The HLR Lookups API v2 (hlr-lookups.com), over HTTP with signed requests',
    guide: 'docs/upstream-hlr-lookups.md',
    settings: {
      url: { default: 'https://www.hlr-lookups.com/api/v2' },
      key: 'the API key',
      secret: 'the API secret (signs each request)',
    },
  },
  {
    name: 'twilio-lookup',
    summary: 'Twilio Lookup v2, over HTTP with basic authentication',
    guide: 'docs/upstream-twilio-lookup.md',
    settings: {
      url: { default: 'https://lookups.twilio.com' },
      key: 'the Account SID (AC…) or an API key SID (SK…)',
      secret: 'the Auth Token, or the API key secret',
    },
  },
] as const satisfies readonly UpstreamAdapter[];

export type UpstreamAdapterName = (typeof UPSTREAM_ADAPTERS)[number]['name'];

export const UPSTREAM_ADAPTER_NAMES: readonly UpstreamAdapterName[] = UPSTREAM_ADAPTERS.map((adapter) => adapter.name);
