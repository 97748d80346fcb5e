module.exports = {
  displayName: 'rpc',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
