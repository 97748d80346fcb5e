module.exports = {
  displayName: 'tracing',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
