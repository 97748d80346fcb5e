module.exports = {
  displayName: 'media-audio',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
