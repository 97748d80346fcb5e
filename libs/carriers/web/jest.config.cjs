module.exports = {
  displayName: 'carrier-web',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
