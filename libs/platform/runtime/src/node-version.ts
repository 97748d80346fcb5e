/** The oldest Node.js major Parley supports: 24 is the active long-term-support line (fixes until April 2028). */
export const SUPPORTED_NODE_MAJOR = 24;

/**
 * Why this Node.js version cannot run Parley, or undefined when it can. Checked before anything else starts so an
 * old runtime fails with this sentence instead of somewhere later.
 */
export function unsupportedNodeReason(version: string = process.versions.node): string | undefined {
  const major = Number(version.replace(/^v/, '').split('.')[0]);
  if (Number.isInteger(major) && major >= SUPPORTED_NODE_MAJOR) return undefined;
  return (
    `Parley needs Node.js ${SUPPORTED_NODE_MAJOR} or later; this is Node.js ${version}. ` +
    'Run it through npm (`npm start`, `npm test`), which uses the Node.js 24 that `npm ci` installs into ' +
    'node_modules/.bin, or install Node.js 24.'
  );
}
