// Tests read response bodies they then assert field by field: `any` there
// keeps them short. Production code keeps undici's `Promise<unknown>`.
export {};
declare global {
  interface Response {
    json(): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  }
}
