/*
 * Estimates pi by Monte Carlo on every rank and averages the estimates on rank 0, as upstream's
 * examples/v2beta1/pi/pi.cc does (the program of the mpioperator/mpi-pi images), in C.
 * Each rank prints its host, so a launcher's log shows where the ranks ran.
 * Build with the mpicc of your MPI: mpicc -O2 -o pi pi.c
 * Run from the launcher:            mpirun -n <slots x workers> ./pi
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank = 0, workers = 0, name_length = 0;
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    const long samples = 10000000;
    long inside = 0;
    double local = 0.0, pi = 0.0;

    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &workers);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Get_processor_name(host, &name_length);
    if (rank == 0) {
        printf("Workers: %d\n", workers);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("Rank %d on host %s\n", rank, host);
    fflush(stdout);

    srand48(rank + 1);
    for (long i = 0; i < samples; i++) {
        double x = drand48() * 2 - 1, y = drand48() * 2 - 1;
        inside += x * x + y * y <= 1.0;
    }
    local = 4.0 * inside / samples;
    MPI_Reduce(&local, &pi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("pi is approximately %.16f\n", pi / workers);
    }
    MPI_Finalize();
    return 0;
}
