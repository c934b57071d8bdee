/*
 * Prints each rank's number and host, after an MPI_Allreduce so that every rank has really joined one
 * MPI world across the hosts (a rank that started alone would print a different size and sum).
 * Build with the mpicc of your MPI: mpicc -o hello hello.c
 * Run from the launcher:            mpirun -n <slots x workers> ./hello
 */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank = 0, size = 0, sum = 0;
    char host[256] = "";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host - 1);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d on %s (sum of ranks %d)\n", rank, size, host, sum);
    MPI_Finalize();
    return 0;
}
