/**
 * Hears how far long work on files has got (reading a large checkpoint, writing a savepoint): `done` of `total`
 * units, and the one just finished (a file, or an operator's uid).
 * @example await writer.write(storage, 'savepoints/v2', { onProgress: ({ done, total }) => console.log(`${done}/${total}`) });
 */
export type ProgressListener = (progress: { done: number; total: number; file: string }) => void;
