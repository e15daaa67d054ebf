// Precompiled headers for the tests (see test/CMakeLists.txt).
