// Jest's node environment gives each test file its own realm, with its own typed-array constructors; a native
// addon (onnxruntime-node) hands back the main realm's, and onnxruntime's own `instanceof` checks then fail. A test
// file running such an addon opts in with `@jest-environment ../../../tools/jest/native-arrays-environment.js`.
const { TestEnvironment } = require('jest-environment-node');

const TYPED_ARRAYS = [
  'Int8Array',
  'Uint8ClampedArray',
  'Int16Array',
  'Uint16Array',
  'Int32Array',
  'Uint32Array',
  'Float32Array',
  'Float64Array',
  'BigInt64Array',
  'BigUint64Array',
];

class NativeArraysEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of TYPED_ARRAYS) this.global[name] = globalThis[name];
  }
}

module.exports = NativeArraysEnvironment;
