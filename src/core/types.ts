/**
 * The contracts every part of weir is built against. Implementations depend on these types, never on each other,
 * so a new state backend, checkpoint storage, source or sink only has to satisfy the interface it implements.
 */
export type * from './values.js';
export type * from './serializer.js';
export type * from './keyedState.js';
export type * from './keyedSnapshot.js';
export type * from './stateBackend.js';
export type * from './checkpointStorage.js';
export type * from './source.js';
export type * from './sourceReader.js';
export type * from './split.js';
export type * from './sink.js';
export type * from './scheduler.js';
