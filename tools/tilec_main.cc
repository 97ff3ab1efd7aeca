// tilec command-line tool (grows with the back end). For now: print the builder GEMM.
#include <iostream>
int main() { std::cout << "tilec\n"; return 0; }
