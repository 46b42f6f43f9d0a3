/**
 * A jest reporter that ends every run with one line saying how many tests ran:
 * `tests: N passed, M failed, K skipped (T in F files)`.
 */
export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(
      `\ntests: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped` +
        ` (${results.numTotalTests} in ${results.numTotalTestSuites} files)\n`,
    );
  }
}
