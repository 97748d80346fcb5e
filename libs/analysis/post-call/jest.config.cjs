module.exports = {
  displayName: 'post-call',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
