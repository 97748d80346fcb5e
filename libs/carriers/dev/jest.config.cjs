module.exports = {
  displayName: 'carrier-dev',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
