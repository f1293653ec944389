export { fsCheckpointStorage } from './fsCheckpointStorage';
export { fromFile } from './fromFile';
export { toFile, fileSink } from './toFile';
