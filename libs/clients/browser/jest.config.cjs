module.exports = {
  displayName: 'browser-client',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
