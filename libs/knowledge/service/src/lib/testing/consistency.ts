import { DataSource } from 'typeorm';
import { CHAMPION_WEIGHTS_SELECT, CHAMPIONS_FROM, CHAMPIONS_PER_LEXEME } from '../migrations';

/*
 * What the integration tests compare a base's kept search statistics with: the lexeme counts and champion lists as
 * stored, and as recomputed from every chunk of the base. Ingestion, deletion and re-fetches keep them exact.
 */

/** The base's lexeme counts as stored (`lexemes`). */
export async function storedLexemeCounts(ds: DataSource, baseId: string): Promise<Map<string, number>> {
  const rows: { lexeme: string; chunk_count: number }[] = await ds.query(`SELECT lexeme, chunk_count FROM lexemes WHERE base_id = $1`, [baseId]);
  return new Map(rows.map((r) => [r.lexeme, r.chunk_count]));
}

/** The base's lexeme counts recounted from its chunks. */
export async function recountedLexemeCounts(ds: DataSource, baseId: string): Promise<Map<string, number>> {
  const rows: { lexeme: string; n: number }[] = await ds.query(
    `SELECT l AS lexeme, count(*)::int AS n FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS l WHERE c.base_id = $1 GROUP BY l`,
    [baseId],
  );
  return new Map(rows.map((r) => [r.lexeme, r.n]));
}

/** The base's champion lists as stored, by lexeme and chunk. */
export async function storedChampions(ds: DataSource, baseId: string): Promise<{ lexeme: string; chunk: string }[]> {
  return ds.query(`SELECT lexeme, chunk_id::text AS chunk FROM champions WHERE base_id = $1 ORDER BY lexeme, chunk_id`, [baseId]);
}

/** What the base's champion lists should be, computed from every chunk of the base. */
export async function recomputedChampions(ds: DataSource, baseId: string): Promise<{ lexeme: string; chunk: string }[]> {
  return ds.query(
    `SELECT r.lexeme, r.chunk_id::text AS chunk FROM (
       SELECT p.lexeme, p.chunk_id, row_number() OVER (PARTITION BY p.lexeme ORDER BY p.weight DESC, p.chunk_id) AS rank
         FROM (${CHAMPION_WEIGHTS_SELECT('c.base_id = $1', `u.lexeme IN (SELECT lexeme FROM lexemes WHERE base_id = $1 AND chunk_count > ${CHAMPIONS_FROM})`)}) AS p
     ) AS r WHERE r.rank <= ${CHAMPIONS_PER_LEXEME} ORDER BY r.lexeme, r.chunk_id`,
    [baseId],
  );
}
