// consumer.c compiled as C++ (the public headers in C++17).
#include "consumer.c"
