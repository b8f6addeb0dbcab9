// Tests read response bodies they then assert field by field: `any` there
// keeps them short. Production code keeps undici's `Promise<unknown>`.
export {};
declare global {
  interface Response {
    // biome-ignore lint/suspicious/noExplicitAny: the tests walk the bodies they read field by field
    json(): Promise<any>;
  }
}
