import { getMetadataStorage } from 'class-validator';
import { BUILT_IN_CHECKS } from '../checks/built-in-checks';
import { EnvironmentVariables } from './environment';
import { environmentReference } from './environment-reference';
import { documentedProperties } from './variable-doc';

describe('the environment reference (what npm run docs writes the configuration docs from)', () => {
  const validated = [...new Set(getMetadataStorage().getTargetValidationMetadatas(EnvironmentVariables, '', true, false).map((rule) => rule.propertyName))];
  const documented = documentedProperties(EnvironmentVariables).map((property) => property.name);

  it('describes every variable of the schema, each once, beside its definition', () => {
    expect(validated.length).toBeGreaterThan(50);
    expect(validated.filter((name) => !documented.includes(name))).toEqual([]);
    expect(documented.filter((name) => !validated.includes(name))).toEqual([]);
    expect(new Set(documented).size).toBe(documented.length);
  });

  it('gives each variable its default from the schema, and what unset means to the others', () => {
    const variables = environmentReference(BUILT_IN_CHECKS).flatMap((section) => section.variables);
    const byName = new Map(variables.map((variable) => [variable.name, variable]));
    expect(byName.get('PORT')).toMatchObject({ default: '3000' });
    expect(byName.get('PROVIDER_MAX_RESPONSE_BYTES')).toMatchObject({ default: '1048576' });
    expect(byName.get('CALLBACK_RETRIES')).toMatchObject({ default: '8' });
    expect(variables.filter((variable) => variable.default === undefined && !variable.unset && !variable.deprecatedFor)).toEqual([]);
  });

  it("lists each check's price and cache lifetime with the defaults of its definition, and each provider id's variables", () => {
    const names = environmentReference(BUILT_IN_CHECKS).flatMap((section) => section.variables.map((variable) => variable.name));
    for (const check of BUILT_IN_CHECKS) expect(names).toEqual(expect.arrayContaining([check.price.variable, check.cacheTtlSeconds.variable]));
    expect(names).toEqual(expect.arrayContaining(['<ID>_ADAPTER', '<ID>_URL', '<ID>_KEY', '<ID>_SECRET', '<ID>_PRICE']));
    const sections = environmentReference(BUILT_IN_CHECKS).map((section) => section.title);
    expect(sections[0]).toBe('Service');
    expect(new Set(sections).size).toBe(sections.length);
  });
});
