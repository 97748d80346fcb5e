module.exports = {
  displayName: 'contracts',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
};
