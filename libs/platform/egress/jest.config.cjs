module.exports = {
  displayName: 'egress',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
