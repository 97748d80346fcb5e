module.exports = {
  displayName: 'gateway-edge',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
