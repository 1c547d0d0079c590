// peer_netty — echo_server's protocol and liveness policy, written as a Netty 4.1 programmer would:
// LineBasedFrameDecoder and String codecs, IdleStateHandler for the heartbeat (reader idle of every
// byte read, PONG included) and a second IdleStateHandler after the control lines for reader idle (data
// lines only), one NIO event loop for the connections (as the other servers run on one thread).
// Policy (bench/peers/README.md): echo each data line; PING x -> PONG x; PONG consumed; after
// --heartbeat-interval of receiving nothing send PING; the --heartbeat-misses-th unanswered PING
// (one interval each) closes with "BYE heartbeat-timeout"; no data line for --reader-idle closes with
// "BYE reader-idle". First stdout line: "listening on 127.0.0.1:PORT". With --tls (and --cert, --key)
// an SslHandler (SslContextBuilder.forServer, the JDK's engine) goes first in every pipeline.
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.LineBasedFrameDecoder;
import io.netty.handler.codec.string.StringDecoder;
import io.netty.handler.codec.string.StringEncoder;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.CharsetUtil;

import java.io.File;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

public final class PeerNetty {
    static long readerIdle = 10000, interval = 5000;
    static int misses = 3;

    static void bye(ChannelHandlerContext ctx, String reason) {
        if (!ctx.channel().isActive()) return;
        ctx.writeAndFlush("BYE " + reason + "\n").addListener(ChannelFutureListener.CLOSE);
    }

    /** The heartbeat: an idle event after each interval with nothing read; a read resets the count. */
    static final class Heartbeat extends IdleStateHandler {
        int outstanding = 0, pings = 0;
        Heartbeat() { super(interval, 0, 0, TimeUnit.MILLISECONDS); }
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
            outstanding = 0;
            super.channelRead(ctx, msg);
        }
        @Override
        protected void channelIdle(ChannelHandlerContext ctx, IdleStateEvent evt) {
            if (outstanding >= misses) { bye(ctx, "heartbeat-timeout"); return; }
            ++outstanding;
            ctx.writeAndFlush("PING " + (++pings) + "\n");
        }
    }

    /** PING is answered, PONG consumed; data lines go on. */
    static final class Control extends SimpleChannelInboundHandler<String> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, String line) {
            if (line.startsWith("PONG")) return;
            if (line.startsWith("PING")) { ctx.writeAndFlush("PONG" + line.substring(4) + "\n"); return; }
            ctx.fireChannelRead(line);
        }
    }

    static final class DataIdle extends IdleStateHandler {
        DataIdle() { super(readerIdle, 0, 0, TimeUnit.MILLISECONDS); }
        @Override
        protected void channelIdle(ChannelHandlerContext ctx, IdleStateEvent evt) { bye(ctx, "reader-idle"); }
    }

    static final class Echo extends SimpleChannelInboundHandler<String> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, String line) { ctx.writeAndFlush(line + "\n"); }
        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) { ctx.close(); }
    }

    public static void main(String[] args) throws Exception {
        String listen = "127.0.0.1:0", cert = null, key = null;
        boolean tls = false;
        for (int i = 0; i < args.length; i += 2) {
            if (args[i].equals("--tls")) { tls = true; --i; continue; }
            if (i + 1 >= args.length) { System.err.println("flag " + args[i] + " needs a value"); System.exit(2); }
            switch (args[i]) {
                case "--cert": cert = args[i + 1]; break;
                case "--key": key = args[i + 1]; break;
                case "--listen": listen = args[i + 1]; break;
                case "--reader-idle": readerIdle = Long.parseLong(args[i + 1]); break;
                case "--heartbeat-interval": interval = Long.parseLong(args[i + 1]); break;
                case "--heartbeat-misses": misses = Integer.parseInt(args[i + 1]); break;
                default: System.err.println("unknown flag " + args[i]); System.exit(2);
            }
        }
        final SslContext ssl = tls ? SslContextBuilder.forServer(new File(cert), new File(key)).build() : null;
        String[] hp = listen.split(":");
        NioEventLoopGroup boss = new NioEventLoopGroup(1), workers = new NioEventLoopGroup(1);
        ServerBootstrap b = new ServerBootstrap()
            .group(boss, workers)
            .channel(NioServerSocketChannel.class)
            .option(ChannelOption.SO_BACKLOG, 4096)
            .childOption(ChannelOption.TCP_NODELAY, true)
            .childHandler(new ChannelInitializer<SocketChannel>() {
                @Override
                protected void initChannel(SocketChannel ch) {
                    ChannelPipeline p = ch.pipeline();
                    if (ssl != null) p.addLast(ssl.newHandler(ch.alloc()));
                    // The heartbeat sees every read (bytes, before framing: a partial line counts);
                    // its PINGs go out through the encoder before it.
                    p.addLast(new StringEncoder(CharsetUtil.ISO_8859_1), new Heartbeat(),
                              new LineBasedFrameDecoder(65536), new StringDecoder(CharsetUtil.ISO_8859_1), new Control());
                    if (readerIdle > 0) p.addLast(new DataIdle());
                    p.addLast(new Echo());
                }
            });
        Channel ch = b.bind(hp[0], Integer.parseInt(hp[1])).sync().channel();
        InetSocketAddress a = (InetSocketAddress) ch.localAddress();
        System.out.println("listening on " + a.getAddress().getHostAddress() + ":" + a.getPort());
        System.out.flush();
        ch.closeFuture().sync();
    }
}
