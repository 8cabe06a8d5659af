import { isPublicAddress, nonPublicReason, PUBLIC_WEB_ONLY, publicOnlyLookup, refusedCallbackUrl } from './callback-address';

const DEVELOPMENT = { ...PUBLIC_WEB_ONLY, allowPrivateNetworks: true };

describe('callback addresses (server-side request forgery)', () => {
  it.each([
    ['127.0.0.1', false],
    ['127.8.9.10', false],
    ['10.1.2.3', false],
    ['172.16.0.1', false],
    ['172.31.255.255', false],
    ['192.168.1.1', false],
    ['169.254.169.254', false], // cloud metadata
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['224.0.0.1', false],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fd12:3456::1', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:a9fe:a9fe', false], // 169.254.169.254, IPv4-mapped
    ['8.8.8.8', true],
    ['172.32.0.1', true],
    ['2001:4860:4860::8888', true],
    ['example.com', false], // not an address at all
    ['2001:4860:4860::8888%eth0', false], // a zone id: a local link
    ['2002:0808:0808::1', true], // 6to4 of 8.8.8.8
    ['64:ff9b::808:808', true], // NAT64 of 8.8.8.8
    ['64:ff9b:1:7f00:0:100:808:808', false], // local-use NAT64: 127.0.0.1 in its /48 layout, 8.8.8.8 read as /96
    ['64:ff9b:1::808:808', false], // local-use NAT64 is an operator's internal prefix, whatever it embeds
    ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', true], // Teredo, client 8.8.8.8 (obfuscated)
  ])('%s is public: %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });

  it.each([
    ['http://127.0.0.1:8080/hook', /127\.0\.0\.1 is not a public address/],
    ['http://[::1]/hook', /::1 is not a public address/],
    ['https://localhost/hook', /localhost is this machine/],
    ['https://api.localhost/hook', /api\.localhost is this machine/],
    ['http://169.254.169.254/latest/meta-data', /not a public address/],
  ])('refuses %s before resolving anything', (url, message) => {
    expect(refusedCallbackUrl(url)).toMatch(message);
  });

  it.each(['https://example.com/hook', 'http://8.8.8.8/hook', 'https://[2001:4860:4860::8888]/hook'])('lets %s be tried', (url) => {
    expect(refusedCallbackUrl(url)).toBeUndefined();
  });

  // IPv6 spellings of internal IPv4 (and other non-global IPv6): each names the range it fell in.
  it.each([
    ['::7f00:1', /not global unicast/], // IPv4-compatible ::127.0.0.1 (deprecated; the URL parser rewrites it so)
    ['::ffff:0:7f00:1', /rfc6145 of 127\.0\.0\.1, loopback/], // IPv4-translated
    ['::ffff:7f00:1', /ipv4Mapped of 127\.0\.0\.1, loopback/],
    ['64:ff9b::a9fe:a9fe', /rfc6052 of 169\.254\.169\.254, linkLocal/], // NAT64, well-known prefix
    ['64:ff9b:1::7f00:1', /NAT64 local-use prefix/], // NAT64, local-use prefix (RFC 8215)
    ['2002:7f00:1::', /6to4 of 127\.0\.0\.1, loopback/],
    ['2002:c0a8:0101::1', /6to4 of 192\.168\.1\.1, private/],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', /teredo of 127\.0\.0\.1, loopback/],
    ['fe80::1%eth0', /zone id/],
    ['100::1', /discard/],
    ['2001:db8::1', /reserved/],
    ['fec0::1', /deprecatedSiteLocal/],
    ['1::1', /not global unicast/],
    ['255.255.255.255', /broadcast/],
    ['192.0.2.1', /reserved/],
  ])('refuses %s and says why', (address, reason) => {
    expect(nonPublicReason(address)).toMatch(reason);
  });

  it.each([
    ['http://[::127.0.0.1]/', /not global unicast/],
    ['http://[::ffff:0:127.0.0.1]/', /127\.0\.0\.1, loopback/],
    ['http://[64:ff9b:1::7f00:1]/', /NAT64 local-use prefix/],
    ['http://[64:ff9b:1:7f00:0:100:808:808]/', /NAT64 local-use prefix/],
    ['http://[2002:7f00:1::]/', /127\.0\.0\.1, loopback/],
    ['http://2130706433/', /127\.0\.0\.1 is not a public address/], // the URL parser reads the number as 127.0.0.1
    ['http://localhost./', /localhost is this machine/],
    ['http://[fe80::1%25eth0]/', /zone id/],
  ])('refuses the callback URL %s', (url, reason) => {
    expect(refusedCallbackUrl(url)).toMatch(reason);
  });

  it('refuses a zone id even where private networks are allowed (it cannot be called at all)', () => {
    expect(refusedCallbackUrl('http://[fe80::1%25eth0]/', DEVELOPMENT)).toMatch(/zone id/);
    expect(refusedCallbackUrl('http://127.0.0.1/', DEVELOPMENT)).toBeUndefined();
  });

  // Issue 35 #7: a public address's other services (SSH, Redis, a database) are no callback receiver.
  it.each([
    ['http://8.8.8.8:22/hook', 22],
    ['http://8.8.8.8:6379/', 6379],
    ['https://example.com:8443/hook', 8443],
    ['https://[2001:4860:4860::8888]:25/', 25],
  ])('refuses %s unless its port is allowed', (url, port) => {
    expect(refusedCallbackUrl(url)).toBe(`port ${port} is not accepted (allowed: 80, 443; CALLBACK_ALLOWED_PORTS lists the ports a callback may use)`);
  });

  it.each(['http://example.com/hook', 'https://example.com/hook', 'http://example.com:80/', 'https://example.com:443/', 'http://8.8.8.8:443/'])(
    'lets %s be tried: 80 and 443, named or implied by the scheme',
    (url) => expect(refusedCallbackUrl(url)).toBeUndefined(),
  );

  it('accepts the ports CALLBACK_ALLOWED_PORTS lists, or any', () => {
    expect(refusedCallbackUrl('https://example.com:8443/', { allowPrivateNetworks: false, allowedPorts: [443, 8443] })).toBeUndefined();
    expect(refusedCallbackUrl('http://example.com/', { allowPrivateNetworks: false, allowedPorts: [443, 8443] })).toMatch(/port 80 is not accepted \(allowed: 443, 8443;/);
    expect(refusedCallbackUrl('http://8.8.8.8:6379/', { allowPrivateNetworks: false, allowedPorts: 'any' })).toBeUndefined();
    // Development (private networks allowed): the local receiver's port is whatever it listens on.
    expect(refusedCallbackUrl('http://127.0.0.1:4000/', DEVELOPMENT)).toBeUndefined();
  });

  it('refuses, at connection time, a name that resolves to a non-public address', async () => {
    // "localhost" resolves through /etc/hosts on every machine, without a network.
    const error = await new Promise<NodeJS.ErrnoException | null>((resolve) => publicOnlyLookup('localhost', {}, (failure) => resolve(failure)));
    expect(error?.code).toBe('ENOTPUBLIC');
    expect(error?.message).toMatch(/localhost resolves to no public address/);
  });
});
