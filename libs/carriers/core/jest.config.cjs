module.exports = {
  displayName: 'carrier-core',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
