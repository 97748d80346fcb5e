import { SUPPORTED_NODE_MAJOR, unsupportedNodeReason } from './node-version';

describe('supported Node.js runtime', () => {
  it('runs the test suite itself on Node.js 24 or later, so a silent fall-back to the system Node fails CI', () => {
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(SUPPORTED_NODE_MAJOR);
    expect(unsupportedNodeReason()).toBeUndefined();
  });

  it('refuses Node.js 20 and 22 with a sentence that names the version and the way out', () => {
    expect(unsupportedNodeReason('20.20.2')).toMatch(/needs Node\.js 24 or later; this is Node\.js 20\.20\.2.*npm start/);
    expect(unsupportedNodeReason('v22.11.0')).toMatch(/this is Node\.js v22\.11\.0/);
  });

  it('accepts 24 and later lines', () => {
    expect(unsupportedNodeReason('24.0.0')).toBeUndefined();
    expect(unsupportedNodeReason('26.1.0')).toBeUndefined();
  });
});
