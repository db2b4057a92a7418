/**
 * The lock service's wire contract: the JSON a caller sends and gets back, over HTTP and by direct
 * invocation alike, and the catalogue of error names. The functions, the client package and the
 * load-testing kit all import this one module (`@es-lease-locks/client/wire`); it imports nothing
 * outside wire/, so any side can take it without the others.
 */
export * from './wire/answers.js';
export * from './wire/errors-catalogue.js';
export * from './wire/event-path.js';
export * from './wire/granularities.js';
export * from './wire/operations.js';
export * from './wire/requests.js';
