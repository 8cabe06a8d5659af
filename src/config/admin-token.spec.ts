import { productionAdminTokenProblem } from './admin-token';

describe('productionAdminTokenProblem', () => {
  it.each([
    ['openssl rand -hex 24', 'c0d1e3f47a9b82d6e5f1a0b3c4d7e8f9a1b2c3d4e5f60718'],
    ['openssl rand -base64 24', 'q9Zt2Lw8Xc4Vb7Nm1Kj5Hg3Fd6Sa0PoI'],
  ])('accepts a random secret (%s)', (_how, token) => {
    expect(productionAdminTokenProblem(token)).toBeUndefined();
  });

  it.each([
    ['the placeholder of issue 35', 'change-me-admin-token', /placeholder from an example/],
    ['the placeholder of .env.example', 'change-me-to-a-long-random-string', /placeholder from an example/],
    ['the placeholder of docs/operations.md', 'change-me-to-16-chars-or-more', /placeholder from an example/],
    ['a placeholder made long', 'CHANGE_ME_0123456789abcdefghijklmnopqrstuvwxyz', /placeholder from an example/],
    ['16 random characters (enough outside production)', 'k3J9xQ2mP7vL0wR5', /has 16 characters, too short for NODE_ENV=production/],
    ['one character repeated', 'x'.repeat(40), /has only 1 different characters, too guessable/],
    ['digits in a row, repeated', '0123456789'.repeat(4).slice(0, 36).replace(/9/g, '8'), /has only 9 different characters, too guessable/],
  ])('refuses %s, in one line that does not show it', (_what, token, reason) => {
    const problem = productionAdminTokenProblem(token);
    expect(problem).toMatch(reason);
    expect(problem).toMatch(/set it to a random secret of at least 32 characters \(e\.g\. `openssl rand -hex 24`\), or unset it/);
    expect(problem).not.toContain(token);
    expect(problem).not.toContain('\n');
  });
});
