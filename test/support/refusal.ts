import { AppError } from '../../src/errors.js';

/**
 * The AppError a function throws (the unit tests' way to read a refusal's code and fields): the test
 * fails if it throws nothing, or something other than an AppError.
 */
export function refusal(run: () => unknown): AppError {
  try {
    run();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a refusal (an AppError), but nothing was thrown');
}
