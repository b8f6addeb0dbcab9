/** The fixes to the postgres driver: [file under src/ and cjs/src/, original text, replacement]. */
export declare const FIXES: readonly (readonly [file: string, original: string, replacement: string])[];
