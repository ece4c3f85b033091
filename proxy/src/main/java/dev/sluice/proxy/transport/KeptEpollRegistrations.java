package dev.sluice.proxy.transport;

import io.netty.channel.IoHandle;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.IoOps;
import io.netty.channel.IoRegistration;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollIoOps;
import io.netty.util.concurrent.ThreadAwareExecutor;

/**
 * Netty's epoll {@link IoHandler} with one change: a socket's registration is never deleted from epoll
 * while the socket lives — the work-around for the half-close registration loss of Netty 4.2.18.
 *
 * <p>The loss: {@code EpollIoHandler}'s registration, asked for an empty interest set
 * ({@link EpollIoOps#NONE}), deletes the fd from epoll ({@code EPOLL_CTL_DEL}) but stays in its
 * {@code Added} state, so the next non-empty set is an {@code EPOLL_CTL_MOD} that fails with
 * {@code ENOENT}. The interest set of a half-closed socket is empty whenever nothing waits to be written
 * (after a FIN, {@code EPOLLIN} and {@code EPOLLRDHUP} are both cleared); the next write that meets
 * backpressure then wants {@code EPOLLOUT}, fails, and the rest of a tunnel's answer is lost
 * ({@code OperationsTest.halfCloseUnderBackpressureDeliversTheWholeEcho}).
 *
 * <p>The change: an empty interest set is submitted as {@link EpollIoOps#EPOLLET} alone — a
 * registration that asks for no event ({@code epoll_ctl(2)}: {@code EPOLLERR} and {@code EPOLLHUP} are
 * always reported, and with {@code EPOLLET} only once per change, so a hung-up socket does not wake the
 * loop over and over, which is what the deletion was for). The fd stays in epoll, later sets are
 * {@code EPOLL_CTL_MOD}s that succeed, and Netty's handler ignores an event that carries neither
 * {@code EPOLLIN}, {@code EPOLLOUT}, {@code EPOLLRDHUP} nor {@code EPOLLERR}. Closing a channel cancels
 * its registration as before (the kernel drops a closed fd from epoll by itself).
 */
final class KeptEpollRegistrations implements IoHandlerFactory {

    private final IoHandlerFactory epoll = EpollIoHandler.newFactory();

    @Override
    public IoHandler newHandler(ThreadAwareExecutor ioExecutor) {
        return new Handler(epoll.newHandler(ioExecutor));
    }

    @Override
    public boolean isChangingThreadSupported() {
        return epoll.isChangingThreadSupported();
    }

    /** The epoll handler, handing out {@link Kept} registrations. */
    private static final class Handler implements IoHandler {
        private final IoHandler delegate;

        Handler(IoHandler delegate) {
            this.delegate = delegate;
        }

        @Override
        public void initialize() {
            delegate.initialize();
        }

        @Override
        public int run(IoHandlerContext context) {
            return delegate.run(context);
        }

        @Override
        public void prepareToDestroy() {
            delegate.prepareToDestroy();
        }

        @Override
        public void destroy() {
            delegate.destroy();
        }

        @Override
        public IoRegistration register(IoHandle handle) throws Exception {
            return new Kept(delegate.register(handle));
        }

        @Override
        public void wakeup() {
            delegate.wakeup();
        }

        @Override
        public boolean isCompatible(Class<? extends IoHandle> handleType) {
            return delegate.isCompatible(handleType);
        }
    }

    /** A registration whose empty interest set keeps the fd in epoll. */
    private static final class Kept implements IoRegistration {
        private final IoRegistration delegate;

        Kept(IoRegistration delegate) {
            this.delegate = delegate;
        }

        @Override
        public <T> T attachment() {
            return delegate.attachment();
        }

        @Override
        public long submit(IoOps ops) {
            if (ops instanceof EpollIoOps epollOps && epollOps.value() == EpollIoOps.NONE.value()) {
                return delegate.submit(EpollIoOps.EPOLLET);
            }
            return delegate.submit(ops);
        }

        @Override
        public boolean isValid() {
            return delegate.isValid();
        }

        @Override
        public boolean cancel() {
            return delegate.cancel();
        }
    }
}
