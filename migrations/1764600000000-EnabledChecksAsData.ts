import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The checks an account has on become data: one `checks text[]` column (the names of the enabled
 * checks, src/checks/) instead of one boolean column per check, so a new check needs no migration.
 *
 * Why an array and not jsonb or a child table: the hot path reads one settings row per account, and
 * an array keeps that one row with no join; the only question asked of it is "which names are on",
 * which is what an array of names answers (a child table would add a join and a second writer to
 * keep in step; jsonb would store `false` for every check off, a second way of saying "not listed").
 * A check not listed is off: a check added later starts off for every existing account, and new
 * accounts get the registry's defaults (SettingsRepository.createDefaults). Existing accounts keep
 * exactly their settings: each true column becomes its name in the array.
 *
 * Down restores the three columns from the array (a name of a check added since is dropped with it).
 */
export class EnabledChecksAsData1764600000000 implements MigrationInterface {
  name = 'EnabledChecksAsData1764600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE account_settings ADD COLUMN checks text[] NOT NULL DEFAULT '{}'`);
    await q.query(`
      UPDATE account_settings
         SET checks = array_remove(ARRAY[
               CASE WHEN network_status THEN 'network_status' END,
               CASE WHEN line_type THEN 'line_type' END,
               CASE WHEN portability THEN 'portability' END
             ]::text[], NULL)`);
    await q.query(`ALTER TABLE account_settings DROP COLUMN network_status, DROP COLUMN line_type, DROP COLUMN portability`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE account_settings
        ADD COLUMN network_status boolean NOT NULL DEFAULT true,
        ADD COLUMN line_type boolean NOT NULL DEFAULT false,
        ADD COLUMN portability boolean NOT NULL DEFAULT false`);
    await q.query(`
      UPDATE account_settings
         SET network_status = 'network_status' = ANY (checks),
             line_type = 'line_type' = ANY (checks),
             portability = 'portability' = ANY (checks)`);
    await q.query(`ALTER TABLE account_settings DROP COLUMN checks`);
  }
}
