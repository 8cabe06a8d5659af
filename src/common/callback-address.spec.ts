import { isPublicAddress, publicOnlyLookup, refusedCallbackHost } from './callback-address';

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
    expect(refusedCallbackHost(new URL(url))).toMatch(message);
  });

  it.each(['https://example.com/hook', 'http://8.8.8.8/hook', 'https://[2001:4860:4860::8888]/hook'])('lets %s be tried', (url) => {
    expect(refusedCallbackHost(new URL(url))).toBeUndefined();
  });

  it('refuses, at connection time, a name that resolves to a non-public address', async () => {
    // "localhost" resolves through /etc/hosts on every machine, without a network.
    const error = await new Promise<NodeJS.ErrnoException | null>((resolve) => publicOnlyLookup('localhost', {}, (failure) => resolve(failure)));
    expect(error?.code).toBe('ENOTPUBLIC');
    expect(error?.message).toMatch(/localhost resolves to no public address/);
  });
});
