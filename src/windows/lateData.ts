/** The side output tag late records go to; read it with `lateData()`. */
export const LATE_DATA = 'late-data';
