/**
 * A jest reporter that ends every run with one line saying how many tests ran:
 * `tests: N passed, M failed, K skipped (T in F files)`. Written to stderr, where jest reports
 * (stdout may carry `--json`), once jest is done: after its own summary.
 */
export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const line =
      `\ntests: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped` +
      ` (${results.numTotalTests} in ${results.numTotalTestSuites} files)\n`;
    process.once('exit', () => process.stderr.write(line));
  }
}
