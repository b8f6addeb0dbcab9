/** The limits scripts/check-size.mjs holds src/ to. */
export const MAX_FILE_LINES: number;
export const MAX_FUNCTION_LINES: number;
/** What in `text` (TypeScript, named `file`) is over the limits: one line per finding. */
export function findings(file: string, text: string): string[];
/** The TypeScript files git tracks (or would) under src/. */
export function sourceFiles(): string[];
