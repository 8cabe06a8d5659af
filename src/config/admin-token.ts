/** The least an ADMIN_TOKEN holds in production: as long as `openssl rand -hex 16` gives, and varied. */
export const PRODUCTION_ADMIN_TOKEN_MIN_LENGTH = 32;
export const PRODUCTION_ADMIN_TOKEN_MIN_DISTINCT = 10;

/** The placeholders our own examples show (.env.example, docs): a token copied from them is known to everyone. */
const PLACEHOLDER = /change[-_ ]?me|placeholder|example|^(admin|secret|password|token)/i;

/**
 * Why an ADMIN_TOKEN is unfit for production, in one line that never shows the token; undefined when it
 * is fit. Outside production the 16-character minimum of the schema is the only rule (a laptop's demo).
 */
export function productionAdminTokenProblem(token: string): string | undefined {
  const fix = `set it to a random secret of at least ${PRODUCTION_ADMIN_TOKEN_MIN_LENGTH} characters (e.g. \`openssl rand -hex 24\`), or unset it to turn the admin API off`;
  if (PLACEHOLDER.test(token)) return `ADMIN_TOKEN is a placeholder from an example, which NODE_ENV=production refuses: ${fix}.`;
  if (token.length < PRODUCTION_ADMIN_TOKEN_MIN_LENGTH) return `ADMIN_TOKEN has ${token.length} characters, too short for NODE_ENV=production: ${fix}.`;
  const distinct = new Set(token).size;
  if (distinct < PRODUCTION_ADMIN_TOKEN_MIN_DISTINCT) return `ADMIN_TOKEN has only ${distinct} different characters, too guessable for NODE_ENV=production: ${fix}.`;
  return undefined;
}
