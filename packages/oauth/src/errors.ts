/** A request the library refuses before any OAuth semantics apply (e.g. an unusable Host header). */
export class BadRequestError extends Error {
  readonly statusCode = 400;
}
