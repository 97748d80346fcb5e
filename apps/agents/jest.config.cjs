module.exports = {
  displayName: 'agents',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
};
