module.exports = {
  displayName: 'media-service',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
