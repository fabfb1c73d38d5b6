/* libgrove's own translation unit: empty. The library is the archives of
 * core/, envs/ and replays/ linked in (python/CMakeLists.txt); CMake
 * wants a source file for a shared library target. */
