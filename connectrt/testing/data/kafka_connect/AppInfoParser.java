/*
 * A shim for running connect-file 4.3.1 (the newest FileStream connectors Maven Central serves)
 * on the Kafka Connect 4.4 runtime: connect-file 4.3.1 calls
 * org.apache.kafka.common.utils.AppInfoParser, which Kafka 4.4 moved to
 * org.apache.kafka.common.utils.internals. The two methods it calls delegate there.
 * Compiled by connectrt.testing.kafka_connect and put on the runtime's classpath (classes of
 * org.apache.kafka.common are never loaded in plugin isolation).
 */
package org.apache.kafka.common.utils;

public final class AppInfoParser {
    private AppInfoParser() {
    }

    public static String getVersion() {
        return org.apache.kafka.common.utils.internals.AppInfoParser.getVersion();
    }

    public static String getCommitId() {
        return org.apache.kafka.common.utils.internals.AppInfoParser.getCommitId();
    }
}
