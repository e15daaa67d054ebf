// SPDX-License-Identifier: BSL-1.0
// Precompiled headers for the tests (see test/CMakeLists.txt).
