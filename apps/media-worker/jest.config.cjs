module.exports = {
  displayName: 'media-worker',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
};
