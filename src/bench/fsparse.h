/* Parsers of the filesystem benchmark tools' outputs (one fsparse_*.c per tool family), each
 * checked against a recorded output of the real tool in tests/golden/fs/ (test_bench_fsparse).
 * Every parser takes the tool's whole output as text and returns 0 with the figure, or -EINVAL
 * when the output has no result line (the tool failed or changed its format), -ERANGE when the
 * tool says the figure could not be timed. */
#ifndef RK_BENCH_FSPARSE_H
#define RK_BENCH_FSPARSE_H

/* fs_mark 3.3: the mean of the "Files/sec" column over its result lines. */
int fsparse_fsmark(const char *out, double *files_per_s);

/* bonnie++ (1.97+ CSV line, as printed with -q): metric "block_output", "rewrite",
 * "block_input" (K/s) or "seeks" (seeks/s). -ERANGE for "+++++" (bonnie++'s mark for a phase
 * too short to time), -EINVAL for an unknown metric or no CSV line. */
int fsparse_bonnie(const char *out, const char *metric, double *value);

/* PostMark 1.51: transactions per second, "N seconds of transactions (T per second)". */
int fsparse_postmark(const char *out, double *tps);

/* dbench 4: "Throughput X MB/sec" (the final line, 10^6 bytes/s). */
int fsparse_dbench(const char *out, double *mbs);

/* pgbench: "tps = X (without initial connection time)" (PostgreSQL 14+; older pgbench's
 * "excluding connections establishing" line too). */
int fsparse_pgbench(const char *out, double *tps);

/* sqlite3 -batch output of the SQLite job's final "SELECT 'rows', count(*)": the row count
 * ("rows|N"). */
int fsparse_sqlite_rows(const char *out, long *rows);

#endif
