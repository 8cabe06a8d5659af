import 'reflect-metadata';

/**
 * What the documentation says of one environment variable, written beside its definition in
 * environment.ts with `@Doc({ … })`: the one description the configuration reference of
 * docs/operations.md and .env.example are generated from (npm run docs, tools/docs/).
 */
export interface VariableDoc {
  /** Starts a section of the reference and of .env.example at this variable (variables keep the class's order). */
  readonly section?: string;
  /** What it does, for people: plain sentences, `code` allowed, no Markdown links. */
  readonly text: string;
  /** What leaving it unset means, for a variable without a default value. */
  readonly unset?: string;
  /** Its default when it is applied outside the schema (a variable whose deprecated name is still read). */
  readonly default?: string | number;
  /** A value to show, commented out, in .env.example for a variable without a default. */
  readonly example?: string;
  /** After it, the reference lists the variables of each registered check, or of each provider id of LOOKUP_PROVIDERS. */
  readonly then?: 'each check' | 'each provider';
  /** A former name of this variable, still read (documented with it, never in .env.example). */
  readonly deprecatedFor?: string;
}

export interface DocumentedProperty extends VariableDoc {
  readonly name: string;
}

const DOCS = Symbol('environment variable docs');

/** Documents one variable of the environment schema (see VariableDoc). */
export function Doc(doc: VariableDoc): PropertyDecorator {
  return (target, property) => {
    const documented: DocumentedProperty[] = Reflect.getOwnMetadata(DOCS, target.constructor) ?? [];
    Reflect.defineMetadata(DOCS, [...documented, { ...doc, name: String(property) }], target.constructor);
  };
}

/** The documented properties of a schema class, in the order of the class. */
export function documentedProperties(schema: abstract new () => object): readonly DocumentedProperty[] {
  return Reflect.getOwnMetadata(DOCS, schema) ?? [];
}
